-- expect: ETOOBIG memory limit
-- timeout_ms: 30000
-- mem_mb: 16
-- limit json bomb

function run()
    local s = "[" .. string.rep("{},", 2e6) .. "{}]"
    return #shale.json.decode(s)
end
