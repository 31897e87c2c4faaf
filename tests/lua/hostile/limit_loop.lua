-- expect: ETIMEOUT timed out
-- timeout_ms: 200
-- limit loop

function run()
    while true do end
end
