-- expect: EINVAL table.insert: attempt to modify a read-only table
-- escape lib table insert

function run()
    table.insert(math, "pwned")
end
