-- expect: ETOOBIG memory limit
-- timeout_ms: 30000
-- mem_mb: 16
-- limit table bomb

function run()
    local t = {}
    for i = 1, 1e9 do t[i] = i end
end
