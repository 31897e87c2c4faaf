-- expect: EINVAL attempt to read undeclared global 'gcinfo'
-- escape gcinfo

function run()
    return gcinfo()
end
