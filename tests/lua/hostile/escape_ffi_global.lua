-- expect: EINVAL attempt to read undeclared global 'ffi'
-- escape ffi global

function run()
    return ffi.C
end
