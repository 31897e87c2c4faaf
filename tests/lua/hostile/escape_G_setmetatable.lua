-- expect: EINVAL cannot change a protected metatable
-- escape G setmetatable

function run()
    setmetatable(_G, nil)
end
