-- expect: ETIMEOUT timed out
-- timeout_ms: 200
-- limit pcall error loop

function run()
    while true do pcall(error, "again") end
end
