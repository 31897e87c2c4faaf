-- expect: EINVAL attempt to read undeclared global 'module'
-- escape module

function run()
    module("evil")
end
