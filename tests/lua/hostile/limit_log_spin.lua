-- expect: ETIMEOUT timed out
-- timeout_ms: 200
-- limit log spin

function run()
    while true do print("spam", 1, 2, 3) end
end
