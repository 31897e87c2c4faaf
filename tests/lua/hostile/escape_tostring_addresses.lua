-- expect: OK table
-- escape tostring addresses

function run()
    -- addresses are visible (harmless); nothing else is
    return (tostring({}):match("^table"))
end
