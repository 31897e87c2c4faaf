-- expect: EINVAL attempt to read undeclared global 'io'
-- escape io open

function run()
    return io.open("/etc/passwd"):read("*a")
end
