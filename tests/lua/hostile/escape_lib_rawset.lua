-- expect: EINVAL rawset: attempt to modify a read-only table
-- escape lib rawset

function run()
    rawset(string, "upper", function() return "pwned" end)
end
