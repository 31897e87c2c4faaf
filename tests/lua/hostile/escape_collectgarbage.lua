-- expect: EINVAL attempt to read undeclared global 'collectgarbage'
-- escape collectgarbage

function run()
    collectgarbage("stop")
end
