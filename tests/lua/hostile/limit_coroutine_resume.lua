-- expect: ETIMEOUT timed out
-- timeout_ms: 200
-- limit coroutine resume

function run()
    while true do
        coroutine.resume(coroutine.create(function() while true do end end))
    end
end
