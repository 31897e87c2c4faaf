-- expect: EINVAL cannot change a protected metatable
-- escape libmeta set

function run()
    setmetatable(string, {})
end
