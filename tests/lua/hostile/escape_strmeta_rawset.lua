-- expect: EINVAL table expected, got string
-- escape strmeta rawset

function run()
    rawset(getmetatable(""), "__index", {})
end
