-- expect: ETIMEOUT timed out
-- timeout_ms: 200
-- mem_mb: 16
-- limit pcall mem loop

function run()
    -- catching the memory error does not buy time
    while true do pcall(string.rep, "x", 2^30) end
end
