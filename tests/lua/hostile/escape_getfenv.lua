-- expect: EINVAL attempt to read undeclared global 'getfenv'
-- escape getfenv

function run()
    local g = getfenv(0)
    return g.io
end
