-- expect: ETOOBIG memory limit
-- timeout_ms: 30000
-- mem_mb: 16
-- limit gsub bomb

function run()
    local s = string.rep("x", 1e6)
    for i = 1, 10 do s = s:gsub("x", "xx") end
    return #s
end
