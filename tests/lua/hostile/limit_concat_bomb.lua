-- expect: ETOOBIG memory limit
-- timeout_ms: 30000
-- mem_mb: 16
-- limit concat bomb

function run()
    local s = "x"
    while true do s = s .. s end
end
