-- expect: EINVAL table.sort: attempt to modify a read-only table
-- escape lib table sort

function run()
    table.sort(table)
end
