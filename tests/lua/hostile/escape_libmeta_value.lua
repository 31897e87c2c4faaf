-- expect: OK locked
-- escape libmeta value

function run()
    return getmetatable(string)
end
