-- expect: OK own-env
-- escape G rawset

function run()
    -- writes go to this call's environment only; the next call is checked
    rawset(_G, "string", { upper = function() return "pwned" end })
    _G.print = nil
    shale = nil
    return "own-env"
end
