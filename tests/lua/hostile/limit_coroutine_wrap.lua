-- expect: ETIMEOUT timed out
-- timeout_ms: 200
-- limit coroutine wrap

function run()
    coroutine.wrap(function() while true do end end)()
end
