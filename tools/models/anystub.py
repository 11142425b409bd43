"""Import stubs: torch with real dtype sizes, everything else permissive."""
import importlib.abc, importlib.machinery, sys, types

import abc
class _AnyMeta(abc.ABCMeta):
    def __getattr__(cls, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        if name == "name":
            return "stub"
        sub = _AnyMeta(name, (_Any,), {})
        setattr(cls, name, sub)
        return sub
    def __call__(cls, *a, **k):
        if len(a) == 1 and not k and (callable(a[0]) or isinstance(a[0], type)):
            return a[0]
        return abc.ABCMeta.__call__(cls, *a, **k)
    def __iter__(cls): return iter(())
    def __len__(cls): return 0
    def __bool__(cls): return False
    def __or__(cls, o): return cls
    def __ror__(cls, o): return cls
    def __getitem__(cls, k): return cls
    def __mro_entries__(cls, bases): return (cls,)

    def __neg__(cls): return cls
    __pos__ = __abs__ = __invert__ = __neg__
    def __add__(cls, o): return cls
    __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __rtruediv__ = __floordiv__ = __rfloordiv__ = __mod__ = __pow__ = __rpow__ = __and__ = __rand__ = __lshift__ = __rshift__ = __add__
    def __int__(cls): return 0
    def __index__(cls): return 0
    def __float__(cls): return 0.0
    def __lt__(cls, o): return False
    __le__ = __gt__ = __ge__ = __lt__
    def __contains__(cls, x): return False
    def __enter__(cls): return cls
    def __exit__(cls, *a): return False

class _Any(metaclass=_AnyMeta):
    def __init__(self, *a, **k): pass
    def __init_subclass__(cls, **k):
        # A stub as a TypedDict-like base with class keywords (0.5.20's
        # `protocol.py: class ResponseInputMessageParam(EasyInputMessageParam,
        # total=False)`): the keywords are dropped.
        super().__init_subclass__()
    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        if name == "name":
            return "stub"
        return _AnyMeta(name, (_Any,), {})
    def __call__(self, *a, **k):
        if len(a) == 1 and not k and callable(a[0]):
            return a[0]
        return _Any()
    def __iter__(self): return iter(())
    def __bool__(self): return False
    def __getitem__(self, k): return _Any()
    def __len__(self): return 0
    def __int__(self): return 0
    def __index__(self): return 0
    def __float__(self): return 0.0
    def __eq__(self, o): return self is o
    def __hash__(self): return id(self)
    def __lt__(self, o): return False
    __le__ = __gt__ = __ge__ = __lt__
    def __add__(self, o): return self
    __radd__ = __sub__ = __mul__ = __rmul__ = __truediv__ = __floordiv__ = __add__
    def __enter__(self): return self
    def __exit__(self, *a): return False
    @classmethod
    def __get_pydantic_core_schema__(cls, source, handler):
        # A stub class as a pydantic field type (0.5.18-0.5.20's
        # `entrypoints/openai/protocol.py` types a field with xgrammar's StructuralTag,
        # imported on the model config's import chain): any value, no validation.
        from pydantic_core import core_schema
        return core_schema.any_schema()

class AnyModule(types.ModuleType):
    DENY = ()
    def __init__(self, name):
        super().__init__(name)
        self.__path__ = []
        self.__file__ = f"<stub {name}>"
    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__") or name in self.DENY:
            raise AttributeError(name)
        v = _AnyMeta(name, (_Any,), {})
        setattr(self, name, v)
        return v

class StubFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def __init__(self, prefixes): self.prefixes = tuple(prefixes)
    def find_spec(self, fullname, path, target=None):
        top = fullname.split(".")[0]
        if top in self.prefixes:
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None
    def create_module(self, spec):
        m = AnyModule(spec.name)
        return m
    def exec_module(self, module): pass

class FallbackFinder(StubFinder):
    """Last resort: fabricate modules that cannot be found (not sglang's own)."""
    def __init__(self): super().__init__(())
    def find_spec(self, fullname, path, target=None):
        if fullname.split(".")[0] in ("sglang",):
            return None
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

# --- torch: dtypes with their real element sizes ---------------------------------
class dtype:
    def __init__(self, name, itemsize, is_fp=True):
        self.name, self.itemsize, self.is_floating_point = name, itemsize, is_fp
    def __repr__(self): return f"torch.{self.name}"

DTYPES = {
    "float32": 4, "float": 4, "float64": 8, "double": 8, "float16": 2, "half": 2,
    "bfloat16": 2, "float8_e4m3fn": 1, "float8_e5m2": 1, "float8_e4m3fnuz": 1,
    "float8_e5m2fnuz": 1, "float8_e8m0fnu": 1, "float4_e2m1fn_x2": 1, "uint8": 1,
    "int8": 1, "int16": 2, "int32": 4, "int64": 8, "long": 8, "int": 4, "bool": 1,
    "uint16": 2, "uint32": 4, "uint64": 8, "complex64": 8,
}

def make_torch():
    torch = AnyModule("torch")
    torch.DENY = ("npu", "xpu", "musa", "mps", "hpu", "sail")
    made = {}
    for n, s in DTYPES.items():
        key = {"float": "float32", "double": "float64", "half": "float16", "long": "int64", "int": "int32"}.get(n, n)
        if key not in made:
            made[key] = dtype(key, s, not key.startswith(("int", "uint", "bool")))
        setattr(torch, n, made[key])
    torch.dtype = dtype
    utils = AnyModule("torch._utils")
    utils._element_size = lambda d: d.itemsize
    torch._utils = utils
    class iinfo:
        def __init__(self, d): self.max = (1 << (8 * d.itemsize - 1)) - 1; self.min = -self.max - 1
    torch.iinfo = iinfo
    torch.__version__ = "2.14.1"
    version = AnyModule("torch.version")
    version.cuda = "12.9"; version.hip = None; version.musa = None; version.xpu = None
    torch.version = version
    sys.modules["torch.version"] = version
    class _Cuda(AnyModule):
        pass
    cuda = AnyModule("torch.cuda")
    cuda.is_available = lambda: True
    cuda.device_count = lambda: 1
    cuda.get_device_capability = lambda *a: CAPABILITY[0]
    torch.cuda = cuda
    sys.modules["torch._utils"] = utils
    sys.modules["torch.cuda"] = cuda
    return torch

CAPABILITY = [(9, 0)]
EXTRA = ["pynvml", "tvm_ffi", "IPython", ]

def install(stub_prefixes=("torch", "triton", "sgl_kernel", "flashinfer", "vllm", "deep_gemm",
                           "cuda", "numba", "torchvision", "torchaudio", "zmq", "uvloop",
                           "setproctitle", "pybase64", "orjson", "xgrammar", "outlines",
                           "llguidance", "partial_json_parser", "compressed_tensors",
                           "einops", "aiter", "nixl", "mooncake", "torch_memory_saver",
                           "decord", "tiktoken", "sentencepiece", "openai", "fastapi",
                           "uvicorn", "prometheus_client", "interegular", "modelscope",
                           "blobfile", "gguf", "soundfile", "cv2", "timm", "scipy", "pandas",
                           "mistral_common", "msgpack", "nvidia", "cutlass", "quack", "tilelang",
                           "flash_attn", "sgl_fa", "kernels", "datasets", "accelerate", "peft",
                           "av", "librosa", "aiohttp", "httpx", "anthropic", "jinja2", "grpc", "starlette") + tuple(EXTRA)):
    torch = make_torch()
    sys.modules["torch"] = torch
    sys.meta_path.insert(0, StubFinder(tuple(p for p in stub_prefixes if p != "torch")))
    sys.meta_path.insert(0, _TorchSub())
    pass

class _TorchSub(StubFinder):
    def __init__(self): super().__init__(())
    def find_spec(self, fullname, path, target=None):
        if fullname.startswith("torch.") and fullname not in sys.modules:
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None


def prepare_sglang(tree):
    """The prelude of a worker that imports one SGLang release's code on a CPU:
    transformers imported first (it must see no torch), its `AutoImageProcessor`
    placeholder made to accept the processors SGLang's config modules register (a
    registration changes no model config), logging quietened, the stubs installed,
    triton's driver answering CUDA (`layers/attention/fla/utils.py` asks it at import),
    and the release's unpacked wheel `tree` first on the import path."""
    import logging
    import os

    import transformers  # noqa: F401  (before the stubs)
    from transformers.utils import import_utils as iu

    getattribute = iu.DummyObject.__getattribute__

    def lenient(cls, key):
        if key == "register":
            return lambda *a, **k: None
        return getattribute(cls, key)

    iu.DummyObject.__getattribute__ = lenient
    logging.disable(logging.WARNING)
    install()
    import triton  # the stub

    target = types.SimpleNamespace(backend="cuda", arch=90, warp_size=32)
    triton.runtime.driver.active.get_current_target = lambda: target
    sys.path.insert(0, tree)
    os.environ.pop("SGLANG_PLATFORM", None)
