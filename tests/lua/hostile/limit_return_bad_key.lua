-- expect: EINVAL a table with a boolean key
-- limit return bad key

function run()
    return { [true] = 1 }
end
