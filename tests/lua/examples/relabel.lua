-- Example ETL (whole object): upper-cases text, tags binary data.
-- Used by tests/unit/test_lua_sandbox.c; line numbers matter there.

local function tag(ctx)
    return ctx.args and ctx.args.tag or "none"
end

function transform(data, ctx)
    if ctx.name:sub(-4) == ".txt" then
        return data:upper()
    end
    local missing = ctx.missing
    return tag(ctx) .. ":" .. data .. missing.field
end
