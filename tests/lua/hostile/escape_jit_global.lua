-- expect: EINVAL attempt to read undeclared global 'jit'
-- escape jit global

function run()
    jit.on()
end
