-- expect: ETIMEOUT timed out
-- timeout_ms: 200
-- limit coroutine pingpong

function run()
    local co = coroutine.wrap(function() while true do coroutine.yield() end end)
    while true do pcall(co) end
end
