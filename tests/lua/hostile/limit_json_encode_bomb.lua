-- expect: ETOOBIG memory limit
-- timeout_ms: 30000
-- mem_mb: 16
-- limit json encode bomb: jansson's tree is charged to the call

function run()
    local t = {}
    for i = 1, 1e5 do t[i] = { i } end
    return #shale.json.encode(t)
end
