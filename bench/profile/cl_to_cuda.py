#!/usr/bin/env python3
"""cl_to_cuda.py: turns gpuagg's generated OpenCL C program into CUDA C++, mechanically, so
that Nsight Compute (which does not profile OpenCL kernels) can profile a twin of the very same
kernel text. Usage:

    cl_to_cuda.py PROGRAM.cl -o PROGRAM.cu [--params PROGRAM.params] [-D NAME[=VALUE]]...

-D are the OpenCL build options (e.g. -D GPUAGG_RUN_CACHE, as the driver passes
"-DGPUAGG_RUN_CACHE"): they become #define lines at the top of the CUDA file, so one .cu is one
OpenCL program build. The kernel text is otherwise kept as it is: macros, comments and lines
stay where they were, and only the OpenCL spellings below change. Build the result with
`nvcc -arch=sm_90a -cubin -lineinfo` and load it with the driver API (cl_on_cuda.cu).

The rules, in the order they are applied:

 1. `#pragma OPENCL ...` lines become comments (CUDA has the 64-bit atomics and doubles they
    enable).
 2. A kernel whose parameter list, after macro expansion, holds `__local T* name` parameters
    (WORKGROUPLOCAL's dynamic local tables, set on the host with clSetKernelArg(size, NULL)):
    its parameter list is replaced by the C preprocessor's expansion of it (cpp -P, with the
    file's macros and the -D options), and each such parameter by `const size_t
    gpuagg_local_bytes_<name>`, in the same position, so the host passes the size where
    OpenCL passes it. The kernel's prologue carves the pointers out of one
    `extern __shared__` buffer, in parameter order, each start aligned to 16 bytes; the host
    launches with the sum of the aligned sizes as dynamic shared memory. Other kernels keep
    their parameter text (macros included). --params lists every kernel's parameters as the
    host passes them (expanded), which cl_on_cuda matches its arguments to by name.
 3. `__kernel` becomes `extern "C" __global__` (C linkage: the kernel keeps its OpenCL name,
    which is what ncu reports and cuModuleGetFunction looks up).
 4. `inline` becomes `__device__ inline` (every OpenCL helper function is device code).
 5. `__local` followed by a declaration of a variable or array (`__local uint x;`,
    `__local uint h[N];`, also inside macro bodies) becomes `__shared__`: an OpenCL local
    variable is one per work group, as a CUDA shared variable is one per block.
 6. The remaining `__local`, and every `__global`, `__private`, are address-space qualifiers
    of pointer types: they are removed (CUDA pointers are generic). `__constant` becomes
    `const`. Where the OpenCL text builds them by token pasting (`__##AS`), the prelude's
    empty macros `__global`, `__local`, `__private` remove them.
 7. `restrict` becomes `__restrict__` (on the `const` input columns nvcc then uses the
    read-only path: the twin's SASS loads them with LDG.E.CONSTANT).
 8. A prelude (PRELUDE below) supplies OpenCL's types and built-ins in CUDA: uchar, ushort,
    uint, ulong (64-bit), get_global_id and its kin (dimension 0..2), barrier ->
    __syncthreads(), the OpenCL 1.x atomics atomic_/atom_ {add, sub, inc, dec, xchg, cmpxchg,
    min, max, and, or, xor} on (volatile) 32- and 64-bit integer pointers (cast to the CUDA
    atomic's own type; 64-bit through unsigned long long / long long; they return the old value
    as OpenCL's do; OpenCL's are relaxed, like CUDA's), as_uint/as_int/as_float/as_ulong/as_long/as_double
    (bit casts), min/max (OpenCL's integer min/max: the usual arithmetic conversions, y < x ?
    y : x) and isnan.

Volatile stays volatile: a `volatile` load in CUDA, as in NVIDIA's OpenCL, is an ld.volatile
that bypasses L1, so the twin's key reads have the same caching as the OpenCL kernel's.

Limits: the OpenCL C that gpuagg generates (scalar types, no vector types, images, samplers,
async copies or printf). Anything else fails to compile in nvcc, which is the check.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

PRELUDE = r"""// ---- cl_to_cuda.py prelude: OpenCL C built-ins in CUDA ----
typedef unsigned char uchar;
typedef unsigned short ushort;
typedef unsigned int uint;
typedef unsigned long ulong;  // 64-bit in CUDA on Linux x86-64, as OpenCL's; the typedef glibc makes
static_assert(sizeof(ulong) == 8 && sizeof(long) == 8, "OpenCL's long and ulong are 64-bit");
// Address spaces that remain after token pasting (`__##AS`): CUDA pointers are generic.
#define __global
#define __local
#define __private
#define __constant const
#define CLK_LOCAL_MEM_FENCE 1u
#define CLK_GLOBAL_MEM_FENCE 2u

__device__ inline size_t get_local_id(uint d) { return d == 0 ? threadIdx.x : d == 1 ? threadIdx.y : d == 2 ? threadIdx.z : 0; }
__device__ inline size_t get_group_id(uint d) { return d == 0 ? blockIdx.x : d == 1 ? blockIdx.y : d == 2 ? blockIdx.z : 0; }
__device__ inline size_t get_local_size(uint d) { return d == 0 ? blockDim.x : d == 1 ? blockDim.y : d == 2 ? blockDim.z : 1; }
__device__ inline size_t get_num_groups(uint d) { return d == 0 ? gridDim.x : d == 1 ? gridDim.y : d == 2 ? gridDim.z : 1; }
__device__ inline size_t get_global_id(uint d) { return get_group_id(d) * get_local_size(d) + get_local_id(d); }
__device__ inline size_t get_global_size(uint d) { return get_num_groups(d) * get_local_size(d); }
__device__ inline size_t get_global_offset(uint) { return 0; }
__device__ inline uint get_work_dim() { return gridDim.z > 1 ? 3u : gridDim.y > 1 ? 2u : 1u; }
// A work-group barrier; __syncthreads() also orders global and shared memory within the block.
__device__ inline void barrier(uint) { __syncthreads(); }

// OpenCL 1.x atomics (relaxed, return the old value) on CUDA's.
#define GPUAGG_CL_ATOMIC(NAME, T, CU_T, EXPR) \
  __device__ inline T NAME(volatile T* p, T x) { CU_T* q = (CU_T*)p; (void)q; return (T)(EXPR); }
#define GPUAGG_CL_ATOMICS(PREFIX, T, CU_T) \
  GPUAGG_CL_ATOMIC(PREFIX##_add, T, CU_T, atomicAdd(q, (CU_T)x)) \
  GPUAGG_CL_ATOMIC(PREFIX##_sub, T, CU_T, atomicAdd(q, (CU_T)0 - (CU_T)x)) \
  GPUAGG_CL_ATOMIC(PREFIX##_xchg, T, CU_T, atomicExch(q, (CU_T)x)) \
  GPUAGG_CL_ATOMIC(PREFIX##_min, T, CU_T, atomicMin(q, (CU_T)x)) \
  GPUAGG_CL_ATOMIC(PREFIX##_max, T, CU_T, atomicMax(q, (CU_T)x)) \
  GPUAGG_CL_ATOMIC(PREFIX##_and, T, CU_T, atomicAnd(q, (CU_T)x)) \
  GPUAGG_CL_ATOMIC(PREFIX##_or, T, CU_T, atomicOr(q, (CU_T)x)) \
  GPUAGG_CL_ATOMIC(PREFIX##_xor, T, CU_T, atomicXor(q, (CU_T)x)) \
  __device__ inline T PREFIX##_inc(volatile T* p) { return (T)atomicAdd((CU_T*)p, (CU_T)1); } \
  __device__ inline T PREFIX##_dec(volatile T* p) { return (T)atomicAdd((CU_T*)p, (CU_T)0 - (CU_T)1); } \
  __device__ inline T PREFIX##_cmpxchg(volatile T* p, T cmp, T val) { return (T)atomicCAS((CU_T*)p, (CU_T)cmp, (CU_T)val); }
// atomicCAS/atomicExch/atomicAdd/atomicAnd/... have no signed 64-bit overloads: signed 64-bit add, sub,
// xchg, cmpxchg, and, or, xor go through unsigned long long (two's complement), min/max through long long.
#define GPUAGG_CL_ATOMICS_LONG(PREFIX) \
  GPUAGG_CL_ATOMIC(PREFIX##_add, long, unsigned long long, atomicAdd(q, (unsigned long long)x)) \
  GPUAGG_CL_ATOMIC(PREFIX##_sub, long, unsigned long long, atomicAdd(q, 0ull - (unsigned long long)x)) \
  GPUAGG_CL_ATOMIC(PREFIX##_xchg, long, unsigned long long, atomicExch(q, (unsigned long long)x)) \
  GPUAGG_CL_ATOMIC(PREFIX##_min, long, long long, atomicMin(q, (long long)x)) \
  GPUAGG_CL_ATOMIC(PREFIX##_max, long, long long, atomicMax(q, (long long)x)) \
  GPUAGG_CL_ATOMIC(PREFIX##_and, long, unsigned long long, atomicAnd(q, (unsigned long long)x)) \
  GPUAGG_CL_ATOMIC(PREFIX##_or, long, unsigned long long, atomicOr(q, (unsigned long long)x)) \
  GPUAGG_CL_ATOMIC(PREFIX##_xor, long, unsigned long long, atomicXor(q, (unsigned long long)x)) \
  __device__ inline long PREFIX##_inc(volatile long* p) { return (long)atomicAdd((unsigned long long*)p, 1ull); } \
  __device__ inline long PREFIX##_dec(volatile long* p) { return (long)atomicAdd((unsigned long long*)p, ~0ull); } \
  __device__ inline long PREFIX##_cmpxchg(volatile long* p, long cmp, long val) { \
    return (long)atomicCAS((unsigned long long*)p, (unsigned long long)cmp, (unsigned long long)val); }
// OpenCL names both widths atomic_* (OpenCL 1.1) and atom_* (cl_khr_*_atomics); both exist here.
GPUAGG_CL_ATOMICS(atomic, uint, unsigned int)
GPUAGG_CL_ATOMICS(atomic, int, int)
GPUAGG_CL_ATOMICS(atomic, ulong, unsigned long long)
GPUAGG_CL_ATOMICS_LONG(atomic)
GPUAGG_CL_ATOMICS(atom, uint, unsigned int)
GPUAGG_CL_ATOMICS(atom, int, int)
GPUAGG_CL_ATOMICS(atom, ulong, unsigned long long)
GPUAGG_CL_ATOMICS_LONG(atom)
#undef GPUAGG_CL_ATOMIC
#undef GPUAGG_CL_ATOMICS
#undef GPUAGG_CL_ATOMICS_LONG

// Bit casts.
__device__ inline uint as_uint(uint x) { return x; }
__device__ inline uint as_uint(int x) { return (uint)x; }
__device__ inline uint as_uint(float x) { return __float_as_uint(x); }
__device__ inline int as_int(uint x) { return (int)x; }
__device__ inline int as_int(int x) { return x; }
__device__ inline int as_int(float x) { return __float_as_int(x); }
__device__ inline float as_float(uint x) { return __uint_as_float(x); }
__device__ inline float as_float(int x) { return __int_as_float(x); }
__device__ inline float as_float(float x) { return x; }
__device__ inline ulong as_ulong(ulong x) { return x; }
__device__ inline ulong as_ulong(long x) { return (ulong)x; }
__device__ inline ulong as_ulong(double x) { return (ulong)__double_as_longlong(x); }
__device__ inline long as_long(ulong x) { return (long)x; }
__device__ inline long as_long(long x) { return x; }
__device__ inline long as_long(double x) { return (long)__double_as_longlong(x); }
__device__ inline double as_double(ulong x) { return __longlong_as_double((long long)x); }
__device__ inline double as_double(long x) { return __longlong_as_double((long long)x); }
__device__ inline double as_double(double x) { return x; }

// OpenCL's integer min/max (the kernels use them on integers only) and isnan.
template <class A, class B>
__device__ inline auto gpuagg_cl_min(A x, B y) -> decltype(true ? A() : B()) { return y < x ? y : x; }
template <class A, class B>
__device__ inline auto gpuagg_cl_max(A x, B y) -> decltype(true ? A() : B()) { return x < y ? y : x; }
#undef min
#undef max
#define min(x, y) gpuagg_cl_min((x), (y))
#define max(x, y) gpuagg_cl_max((x), (y))
__device__ inline int gpuagg_cl_isnan(float x) { return x != x; }
__device__ inline int gpuagg_cl_isnan(double x) { return x != x; }
#undef isnan
#define isnan(x) gpuagg_cl_isnan(x)
// ---- end of prelude; the OpenCL program follows ----
"""

KERNEL_RE = re.compile(r"\b__kernel\s+void\s+([A-Za-z_]\w*)\s*\(")
# `__local` starting a declaration of a variable or array: [qualifiers] type name then ; [ , or =
LOCAL_DECL_RE = re.compile(r"\b__local\b(?=\s+(?:(?:const|volatile)\s+)*[A-Za-z_]\w*\s+[A-Za-z_]\w*\s*[;\[,=])")
LOCAL_PARAM_RE = re.compile(r"^(?P<qual>(?:\s*(?:const|volatile)\b)*)\s*__local\b(?P<type>[^*]*\*(?:\s*(?:const|volatile|restrict)\b)*)\s*(?P<name>[A-Za-z_]\w*)\s*$")


def split_params(text):
    """Top-level comma split of a parameter list."""
    parts, depth, start = [], 0, 0
    for i, c in enumerate(text):
        if c in "([":
            depth += 1
        elif c in ")]":
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


def matching_paren(text, open_at):
    depth = 0
    for i in range(open_at, len(text)):
        if text[i] == "(":
            depth += 1
        elif text[i] == ")":
            depth -= 1
            if depth == 0:
                return i
    raise ValueError("unbalanced parentheses after offset %d" % open_at)


def in_line_comment(text, at):
    line_start = text.rfind("\n", 0, at) + 1
    return "//" in text[line_start:at]


def find_cpp():
    for candidate in (os.environ.get("CPP"), "cpp", "gcc", "clang"):
        if candidate and shutil.which(candidate.split()[0]):
            return candidate
    sys.exit("cl_to_cuda.py: no C preprocessor (cpp, gcc or clang) found; set CPP")


def expand(prefix, params, defines, cpp):
    """The C preprocessor's expansion of a kernel's parameter text, with every macro defined
    before the kernel (prefix) and the build options."""
    marker = "GPUAGG_CL_TO_CUDA_PARAMS_BEGIN"
    source = prefix + "\n" + marker + " " + params + "\n"
    with tempfile.NamedTemporaryFile("w", suffix=".c", delete=False) as f:
        f.write(source)
        path = f.name
    try:
        cmd = cpp.split() + (["-E"] if cpp.split()[0] != "cpp" else []) + ["-P", "-undef"]
        cmd += ["-D" + d for d in defines] + [path]
        out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    except subprocess.CalledProcessError as e:
        sys.exit("cl_to_cuda.py: the preprocessor failed on a kernel signature:\n" + e.stderr)
    finally:
        os.unlink(path)
    at = out.rfind(marker)
    if at < 0:
        sys.exit("cl_to_cuda.py: the preprocessor lost the signature marker")
    return " ".join(out[at + len(marker):].split())


SCALAR_BYTES = {"char": 1, "uchar": 1, "short": 2, "ushort": 2, "int": 4, "uint": 4, "float": 4, "long": 8,
                "ulong": 8, "double": 8, "size_t": 8, "bool": 1}


def clean_type(text):
    """A parameter's type as CUDA spells it (rules 6 and 7 applied)."""
    text = re.sub(r"\b(?:__local|__global|__private)\b(?!_)", "", text)
    text = re.sub(r"\b__constant\b(?!_)", "const", text)
    text = re.sub(r"\brestrict\b", "__restrict__", text)
    return " ".join(text.replace("*", " * ").split()).replace(" *", "*")


def manifest_rows(kernel, params):
    """One row per parameter: kernel, position, name, bytes the host passes, type."""
    rows = []
    for index, p in enumerate(params):
        m = re.match(r"^(.*?)([A-Za-z_]\w*)\s*$", p)
        if not m:
            sys.exit("cl_to_cuda.py: cannot read parameter %r of %s" % (p, kernel))
        ptype, name = clean_type(m.group(1)), m.group(2)
        if "*" in ptype:
            size = 8
        else:
            words = [w for w in ptype.split() if w not in ("const", "volatile")]
            size = SCALAR_BYTES.get(words[-1], 0) if words else 0
        rows.append("%s\t%d\t%s\t%d\t%s" % (kernel, index, name, size, ptype))
    return rows


def rewrite_local_params(text, defines, cpp, manifest):
    """Rule 2: kernels with __local pointer parameters. Lists every kernel's parameters, as the
    host passes them, in `manifest`."""
    out, pos = [], 0
    for m in KERNEL_RE.finditer(text):
        if in_line_comment(text, m.start()):
            continue
        open_at = m.end() - 1
        close_at = matching_paren(text, open_at)
        expanded = expand(text[:m.start()], text[open_at + 1:close_at], defines, cpp)
        params = split_params(expanded)
        local = [LOCAL_PARAM_RE.match(p) for p in params]
        host_params = [("const size_t gpuagg_local_bytes_" + lm.group("name")) if lm else p
                       for p, lm in zip(params, local)]
        manifest.extend(manifest_rows(m.group(1), host_params))
        if not any(local):
            continue
        body_open = text.index("{", close_at)
        prologue = []
        for lm in local:
            if not lm:
                continue
            name = lm.group("name")
            ptr_type = (lm.group("qual") + " " + lm.group("type")).strip()
            ptr_type = re.sub(r"\brestrict\b", "", ptr_type).strip()
            prologue.append("  %s %s = (%s)(gpuagg_local_arena + gpuagg_local_at);\n"
                            "  gpuagg_local_at += (gpuagg_local_bytes_%s + 15) & ~(size_t)15;\n"
                            % (ptr_type, name, ptr_type, name))
        out.append(text[pos:open_at + 1])
        out.append(",\n    ".join(host_params))
        out.append(text[close_at:body_open + 1])
        out.append("\n  // cl_to_cuda.py: the local-memory pointer arguments, carved in parameter order from the dynamic\n"
                   "  // shared memory (the host passes each one's size where OpenCL passes it).\n"
                   "  extern __shared__ __align__(16) unsigned char gpuagg_local_arena[];\n"
                   "  size_t gpuagg_local_at = 0;\n" + "".join(prologue))
        pos = body_open + 1
    out.append(text[pos:])
    return "".join(out)


def transform(text, defines, source_name="", cpp=None, manifest=None):
    """The CUDA text; `manifest` (a list) receives every kernel's parameters (rule 2)."""
    cpp = cpp or find_cpp()
    manifest = [] if manifest is None else manifest
    # Rule 1.
    text = re.sub(r"^[ \t]*#[ \t]*pragma[ \t]+OPENCL\b.*$", lambda m: "// [OpenCL only] " + m.group(0).strip(), text,
                  flags=re.M)
    # Rule 2, on the OpenCL spelling (the preprocessor sees the macros as OpenCL has them).
    text = rewrite_local_params(text, defines, cpp, manifest)
    # Rules 3 to 7.
    text = re.sub(r"\b__kernel\b", 'extern "C" __global__', text)
    text = re.sub(r"\binline\b", "__device__ inline", text)
    text = LOCAL_DECL_RE.sub("__shared__", text)
    text = re.sub(r"\b(?:__local|__global|__private)\b(?!_)[ \t]*", "", text)
    text = re.sub(r"\b__constant\b(?!_)", "const", text)
    text = re.sub(r"\brestrict\b", "__restrict__", text)
    header = "// Generated by bench/profile/cl_to_cuda.py%s: gpuagg's OpenCL program as CUDA C++. Do not edit.\n" % (
        " from " + source_name if source_name else "")
    options = "".join("#define %s %s\n" % tuple((d.split("=", 1) + ["1"])[:2]) for d in defines)
    if options:
        options = "// OpenCL build options\n" + options
    return header + PRELUDE + options + text


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("input", help="OpenCL C program (gpuagg_dump_source output); - for stdin")
    ap.add_argument("-o", "--output", help="CUDA file to write (default: stdout)")
    ap.add_argument("--params", metavar="FILE",
                    help="also write every kernel's parameters (kernel, position, name, bytes, type; tab-separated), "
                         "which cl_on_cuda reads to pass arguments by name")
    ap.add_argument("-D", dest="defines", action="append", default=[], metavar="NAME[=VALUE]",
                    help="an OpenCL build option -DNAME[=VALUE]")
    a = ap.parse_args()
    text = sys.stdin.read() if a.input == "-" else open(a.input).read()
    manifest = []
    cuda = transform(text, a.defines, os.path.basename(a.input) if a.input != "-" else "", manifest=manifest)
    if a.params:
        with open(a.params, "w") as f:
            f.write("\n".join(manifest) + "\n")
    if a.output:
        with open(a.output, "w") as f:
            f.write(cuda)
    else:
        sys.stdout.write(cuda)


if __name__ == "__main__":
    main()
