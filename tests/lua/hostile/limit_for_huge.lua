-- expect: ETIMEOUT timed out
-- timeout_ms: 200
-- limit for huge

function run()
    local n = 0
    for i = 1, math.huge do n = n + i end
    return n
end
