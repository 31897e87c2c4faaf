-- expect: EINVAL attempt to read undeclared global 'load'
-- escape load

function run()
    return load("return io")()
end
