-- expect: EINVAL attempt to index
-- escape strmeta index

function run()
    getmetatable("").__index = { upper = function() return "pwned" end }
end
