-- expect: EINVAL attempt to modify read-only table 'string' (field 'upper')
-- escape lib write

function run()
    string.upper = function() return "pwned" end
end
