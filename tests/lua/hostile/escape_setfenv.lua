-- expect: EINVAL attempt to read undeclared global 'setfenv'
-- escape setfenv

function run()
    setfenv(1, {})
end
