-- expect: OK 3
-- limit yield across pcall: the pcall wrapper keeps yields working

function run()
    local co = coroutine.wrap(function()
        pcall(function() coroutine.yield(1) end)
        return 2
    end)
    return tostring(co() + co())
end
