-- expect: OK locked
-- escape G metatable

function run()
    return getmetatable(_G)
end
