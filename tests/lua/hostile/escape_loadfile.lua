-- expect: EINVAL attempt to read undeclared global 'loadfile'
-- escape loadfile

function run()
    return loadfile("/etc/passwd")
end
