-- expect: EINVAL attempt to read undeclared global 'loadstring'
-- escape loadstring

function run()
    return loadstring("return 1")()
end
