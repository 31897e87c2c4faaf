-- expect: EINVAL attempt to modify read-only table 'shale' (field 'md5')
-- escape shale write

function run()
    shale.md5 = function() return "pwned" end
end
