-- expect: EINVAL attempt to read undeclared global 'package'
-- escape package

function run()
    return package.loaded.io
end
