-- expect: EINVAL bad argument #1 to 'setmetatable'
-- escape strmeta set

function run()
    setmetatable("", { __index = {} })
end
