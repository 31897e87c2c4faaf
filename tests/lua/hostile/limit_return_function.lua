-- expect: EINVAL a function value, which cannot leave the sandbox
-- limit return function

function run()
    return print
end
