-- expect: EINVAL attempt to read undeclared global 'dofile'
-- escape dofile

function run()
    return dofile("/etc/passwd")
end
