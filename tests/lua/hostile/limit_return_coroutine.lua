-- expect: EINVAL a thread value
-- limit return coroutine

function run()
    return { co = coroutine.create(print) }
end
