-- expect: ETOOBIG memory limit
-- mem_mb: 16
-- limit concat bomb

function run()
    local s = "x"
    while true do s = s .. s end
end
