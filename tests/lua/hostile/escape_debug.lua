-- expect: EINVAL attempt to read undeclared global 'debug'
-- escape debug

function run()
    return debug.getregistry()
end
