"""tilevm.compile: a .tile program as a Python callable on NumPy arrays or torch tensors."""

import os
import sys
from dataclasses import dataclass

import numpy as np

from . import _tilevm as _C
from ._arrays import is_tensor, tensor_bytes, torch_module, torch_to_numpy_dtype
from ._layout import Layout


@dataclass(frozen=True)
class Param:
    """A program parameter: ``kind`` is ``"pointer"`` (an array) or ``"scalar"``; ``dtype`` the tilevm type;
    ``host_dtype`` the NumPy dtype that holds a pointer's elements (``<f2`` for f16, ``<u2`` for bf16 bits,
    ``|u1`` raw packed bytes for sub-byte and 8-bit float types), as ``tilevm run``'s .npy files."""

    name: str
    kind: str
    dtype: str
    host_dtype: str


class Kernel:
    """A parsed and verified program; call it with one argument per parameter (positional in the
    program's order, or by name): arrays for pointers, numbers for scalars.

        k = tilevm.compile("examples/matmul_f16_i6.tile")
        k(a, b, c, m=16, n=64, k=128)              # c updated in place

    backend: ``"interp"`` runs on the CPU interpreter (which reports races and out-of-bounds accesses as
    tilevm.RunError), ``"gpu"`` on the GPU. The default is the GPU for CUDA tensors, else the interpreter.
    CUDA tensors launch through ``torch.ops.tilevm.launch`` on their device and the current stream; the
    program is compiled for the device by the first call or by ``precompile``. NumPy arrays and CPU tensors on
    ``backend="gpu"`` are copied to the GPU and back (``tilevm run --gpu``).
    """

    def __init__(self, program, file):
        self._program = program
        self.file = file
        self.params = [Param(*p) for p in program.params]
        self._gpu = {}  # device index -> _C.GpuKernel
        self._id = None

    @property
    def name(self) -> str:
        return self._program.name

    @property
    def arch(self) -> str:
        """The architecture the program was lowered for (``compile``'s ``arch``)."""
        return self._program.arch

    @property
    def text(self) -> str:
        """The lowered program's canonical text (``tilevm print --after all --arch`` this kernel's ``arch``)."""
        return self._program.text

    @property
    def layouts(self) -> dict:
        """The program's named layouts (``WL = thread_major(...)`` in the file, evaluated with the constants
        it was compiled with), by name: ``k.layouts["WL"].pack_tiled(codes, "u4")`` stores a weight for
        ``ViewGlobal(..., layout=WL)``."""
        return {name: Layout(text) for name, text in self._program.layouts}

    @property
    def param_layouts(self) -> dict:
        """The layout each pointer argument's tensor must be stored in, for the arguments the program views
        through a laid-out ``ViewGlobal`` (the compiler's choice for ``layout=auto``), by parameter name:
        ``k.param_layouts["w_ptr"].pack_tiled(codes, "u4")`` gives the bytes to pass as ``w_ptr``.
        Arguments stored row-major (or by strides) are not listed."""
        return {name: Layout(text) for name, text in self._program.param_layouts}

    def __repr__(self):
        params = ", ".join(f"{p.name}: {p.dtype}{'*' if p.kind == 'pointer' else ''}" for p in self.params)
        return f"<tilevm.Kernel {self.name}({params}) from {self.file}>"

    # -- arguments ------------------------------------------------------------------------------------------

    def _bind(self, args, kwargs):
        if len(args) > len(self.params):
            raise TypeError(f"{self.name} takes {len(self.params)} arguments "
                            f"({', '.join(p.name for p in self.params)}), got {len(args)}")
        bound = {p.name: a for p, a in zip(self.params, args)}
        for name, value in kwargs.items():
            if not any(p.name == name for p in self.params):
                raise TypeError(f"{self.name} has no parameter {name!r}; its parameters are "
                                f"{', '.join(p.name for p in self.params)}")
            if name in bound:
                raise TypeError(f"{self.name}: {name!r} given twice")
            bound[name] = value
        missing = [p.name for p in self.params if p.name not in bound]
        if missing:
            raise TypeError(f"{self.name}: missing argument(s) {', '.join(missing)}")
        return bound

    def _check_array(self, p, a):
        want = np.dtype(p.host_dtype)
        if is_tensor(a):
            have = torch_to_numpy_dtype(a.dtype)
            torch = torch_module()
            ok = have == want or (want == np.dtype("|u1") and a.dtype == torch.uint8)
            ok = ok or (p.dtype == "bf16" and a.dtype == torch.bfloat16)
            if not ok:
                raise TypeError(f"{self.name}: {p.name} is {p.dtype}* (elements held as {want}), got a tensor of "
                                f"{a.dtype}")
            if not a.is_contiguous():
                raise ValueError(f"{self.name}: {p.name} is not contiguous (strides {a.stride()}): pass "
                                 f"{p.name}.contiguous()")
            return
        if not isinstance(a, np.ndarray):
            raise TypeError(f"{self.name}: {p.name} is a pointer ({p.dtype}*); pass a NumPy array or a torch tensor, "
                            f"not {type(a).__name__}")
        if a.dtype != want:
            raise TypeError(f"{self.name}: {p.name} is {p.dtype}* and needs a {want} array, got {a.dtype}")
        if not a.flags.c_contiguous:
            raise ValueError(f"{self.name}: {p.name} is not C-contiguous: pass np.ascontiguousarray({p.name})")
        if not a.flags.writeable:
            raise ValueError(f"{self.name}: {p.name} is read-only; the program may write it: pass a copy")

    def _scalars(self, bound):
        ints, floats = {}, {}
        for p in self.params:
            if p.kind != "scalar":
                continue
            v = bound[p.name]
            if isinstance(v, np.generic):
                v = v.item()
            if _C.dtype_info(p.dtype)["kind"] == "float":
                if not isinstance(v, (int, float)) or isinstance(v, bool):
                    raise TypeError(f"{self.name}: {p.name} is a {p.dtype} scalar, got {v!r}")
                floats[p.name] = float(v)
            else:
                if not isinstance(v, int):
                    raise TypeError(f"{self.name}: {p.name} is a {p.dtype} scalar and needs an int, got {v!r}")
                ints[p.name] = int(v)
        return ints, floats

    # -- running --------------------------------------------------------------------------------------------

    def __call__(self, *args, backend=None, **kwargs):
        bound = self._bind(args, kwargs)
        arrays = {p.name: bound[p.name] for p in self.params if p.kind == "pointer"}
        for p in self.params:
            if p.kind == "pointer":
                self._check_array(p, arrays[p.name])
        ints, floats = self._scalars(bound)
        tensors = [a for a in arrays.values() if is_tensor(a)]
        on_cuda = [a for a in tensors if a.device.type == "cuda"]
        if backend not in (None, "gpu", "interp"):
            raise ValueError(f"backend must be 'gpu' or 'interp', got {backend!r}")
        if on_cuda:
            if backend == "interp":
                raise ValueError(f"{self.name}: backend='interp' runs on host memory but some tensors are on "
                                 f"{on_cuda[0].device}: move them with .cpu()")
            if len(on_cuda) != len(arrays) or len({a.device for a in on_cuda}) != 1:
                raise ValueError(f"{self.name}: every pointer argument must be on the same CUDA device, got "
                                 f"{[str(a.device) if is_tensor(a) else 'numpy' for a in arrays.values()]}")
            return self._launch_op(arrays, ints, floats)
        backend = backend or "interp"
        if tensors and len(tensors) == len(arrays) and backend == "interp":
            return self._launch_op(arrays, ints, floats)  # CPU tensors: the registered op (interpreter)
        self._run_host(arrays, ints, floats, gpu=backend == "gpu")

    def _run_host(self, arrays, ints, floats, gpu):
        buffers = {}
        for name, a in arrays.items():
            buffers[name] = tensor_bytes(a) if is_tensor(a) else a.reshape(-1).view(np.uint8)
        printed = self._program.run(buffers, ints, floats, gpu)
        if printed:
            sys.stdout.write(printed)

    def _launch_op(self, arrays, ints, floats):
        from . import _torch_ops

        if self._id is None:
            self._id = _torch_ops.register_kernel(self)
        names = [p.name for p in self.params if p.kind == "pointer"]
        self._int_names = [p.name for p in self.params if p.kind == "scalar" and p.name in ints]
        self._float_names = [p.name for p in self.params if p.kind == "scalar" and p.name in floats]
        buffers = [arrays[n] for n in names]
        int_list, float_list = [ints[n] for n in self._int_names], [floats[n] for n in self._float_names]
        if _torch_ops.is_compiling():
            torch_module().ops.tilevm.launch(self._id, buffers, int_list, float_list)
        else:  # eager: the op's body directly, without the dispatcher's per-call cost
            self._launch_tensors(buffers, int_list, float_list)

    def _launch_tensors(self, buffers, ints, floats):
        # The real implementation of torch.ops.tilevm.launch (tilevm/_torch_ops.py).
        from . import _torch_ops

        names = [p.name for p in self.params if p.kind == "pointer"]
        int_args = dict(zip(self._int_names, ints))
        float_args = dict(zip(self._float_names, floats))
        device = buffers[0].device if buffers else None
        if device is None or device.type == "cpu":
            self._run_host(dict(zip(names, buffers)), int_args, float_args, gpu=False)
            return
        for name, t in zip(names, buffers):
            if t.data_ptr() % 16:
                raise ValueError(f"{self.name}: {name}'s address {t.data_ptr():#x} is not 16-byte aligned: pass "
                                 f"{name}.clone()")
        gpu = self._load(device)
        image = gpu.workspace_image(int_args, float_args)
        workspace = 0
        if image.size:
            if _torch_ops.capturing(device):
                raise RuntimeError(f"{self.name} allocates global memory (AllocateGlobal), whose initial values are "
                                   "uploaded per launch, which cannot happen during CUDA-graph capture")
            ws = _torch_ops.upload(image, device)
            workspace = ws.data_ptr()
        gpu.launch(_torch_ops.current_stream(device), {n: t.data_ptr() for n, t in zip(names, buffers)}, int_args,
                   float_args, workspace)

    def _load(self, device):
        from . import _torch_ops

        index = device.index if device.index is not None else torch_module().cuda.current_device()
        gpu = self._gpu.get(index)
        if gpu is None:
            if _torch_ops.capturing(device):
                raise RuntimeError(f"{self.name} is not compiled for {device} and a CUDA graph is being captured "
                                   "(compiling is not allowed there): call kernel.precompile(device) first")
            gpu = self._gpu[index] = _C.GpuKernel.load(self._program, index)
        return gpu

    def precompile(self, device="cuda"):
        """Compiles the program for ``device`` (a CUDA device) and loads it, so that calls on tensors there,
        and CUDA-graph capture, only launch."""
        torch = torch_module()
        if torch is None:
            raise ImportError("precompile loads the program for a CUDA device of PyTorch; import torch")
        self._load(torch.device(device))
        return self


def compile(text_or_path, arch=None, **constants) -> Kernel:
    """Parses and verifies a .tile program (a path, or the program's text) and returns a callable Kernel.

    ``arch`` (``"sm_90a"``, ``"sm_80"``, ...) is the GPU the tile layer lowers for: which instructions its
    Gemms use and the order ``layout=auto`` stores a tensor in (``Kernel.param_layouts``). By default the
    first GPU's (a Hopper gets wgmma and TMA), or sm_80 on a machine without one. The kernel runs on the
    interpreter whatever it was lowered for, and on any GPU that has the instructions it uses.

    ``constants`` override the program's top-level constants (``tilevm run -D NAME=VALUE``). A program with
    errors raises tilevm.CompileError whose message is every located diagnostic
    (``FILE:LINE:COL: error: ...``, the line and a caret).
    """
    if isinstance(text_or_path, os.PathLike) or (
        isinstance(text_or_path, str) and "\n" not in text_or_path and text_or_path.endswith(".tile")
    ):
        path = os.fspath(text_or_path)
        with open(path, encoding="utf-8") as f:
            source = f.read()
        file = path
    elif isinstance(text_or_path, str):
        source, file = text_or_path, "<string>"
    else:
        raise TypeError(f"compile expects a .tile path or program text, got {type(text_or_path).__name__}")
    defines = {name: _define(value) for name, value in constants.items()}
    if arch is not None and not isinstance(arch, str):
        raise TypeError(f"arch must be a string such as 'sm_90a', got {arch!r}")
    return Kernel(_C.Program.parse(source, file, defines, arch or ""), file)


def _define(value) -> str:
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, (int, float, np.integer, np.floating)):
        return repr(value.item() if isinstance(value, np.generic) else value)
    if isinstance(value, str):
        return value
    raise TypeError(f"a constant must be a number or a string (an expression), got {value!r}")
