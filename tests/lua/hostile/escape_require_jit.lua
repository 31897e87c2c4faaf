-- expect: EINVAL attempt to read undeclared global 'require'
-- escape require jit

function run()
    local jit = require("jit")
    jit.on()
end
