-- expect: EINVAL attempt to read undeclared global 'require'
-- escape require ffi

function run()
    local ffi = require "ffi"
    ffi.cdef("int system(const char *);")
    return ffi.C.system("true")
end
