-- expect: EINVAL line 6: attempt to read undeclared global 'not_defined_anywhere'
-- escape undeclared

function run()
    local x = 1
    return not_defined_anywhere
end
