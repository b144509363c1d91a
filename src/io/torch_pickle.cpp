// Restricted unpickler for torch.save() state dicts (see torch_pickle.h).
// Objects live in one arena owned by the unpickler and refer to each other by raw pointer:
// deep nesting or cycles cannot recurse or leak on destruction, and caps on pickle size,
// object count, stack, marks and memo bound the memory a hostile pickle can claim.
#include "io/torch_pickle.h"

#include <cstdio>
#include <cstring>
#include <memory>
#include <unordered_map>

#include "core/check.h"

namespace rc::io::pickle {
namespace {

constexpr size_t kMaxObjects = size_t(1) << 22;
constexpr size_t kMaxStack = size_t(1) << 20;
constexpr size_t kMaxMarks = size_t(1) << 16;
constexpr size_t kMaxMemo = size_t(1) << 20;

enum class Kind { none, boolean, integer, floating, string, bytes, tuple, list, dict, global, storage, tensor };

enum class Global { ordered_dict, rebuild_tensor_v2, rebuild_parameter, rebuild_parameter_with_state, storage_type };

struct Obj {
  Kind kind = Kind::none;
  int64_t i = 0;  // integer, boolean; storage/tensor: index into the side tables
  double f = 0;
  std::string s;  // string, bytes; global: "module.name"
  Global g = Global::ordered_dict;
  DType storage_dtype = DType::f32;  // global storage_type
  std::vector<Obj*> items;           // tuple, list; dict: key0, value0, key1, value1, ...
};

// A switch with no default, like every enum -> name in the tree: -Wswitch proves each value is
// named (alike in shape to the others on purpose; docs/architecture.md).
const char* kind_name(Kind k) {
  switch (k) {
    case Kind::none:
      return "None";
    case Kind::boolean:
      return "bool";
    case Kind::integer:
      return "int";
    case Kind::floating:
      return "float";
    case Kind::string:
      return "str";
    case Kind::bytes:
      return "bytes";
    case Kind::tuple:
      return "tuple";
    case Kind::list:
      return "list";
    case Kind::dict:
      return "dict";
    case Kind::global:
      return "global";
    case Kind::storage:
      return "storage";
    case Kind::tensor:
      return "tensor";
  }
  return "?";
}

bool storage_dtype(std::string_view name, DType& out) {
  static constexpr std::pair<std::string_view, DType> kTable[] = {
      {"FloatStorage", DType::f32},   {"HalfStorage", DType::f16}, {"BFloat16Storage", DType::bf16},
      {"DoubleStorage", DType::f64},  {"LongStorage", DType::i64}, {"IntStorage", DType::i32},
      {"ShortStorage", DType::i16},   {"CharStorage", DType::i8},  {"ByteStorage", DType::u8},
      {"BoolStorage", DType::boolean}};
  for (auto [n, dt] : kTable)
    if (name == n) {
      out = dt;
      return true;
    }
  return false;
}

class Unpickler {
 public:
  Unpickler(std::string_view bytes, std::string file) : p_(bytes), file_(std::move(file)) {}

  // Runs to STOP and returns the top object. Objects stay owned by the unpickler.
  Obj* run();

  std::vector<StorageRef> storages;
  std::vector<TensorRef> tensors;

 private:
  [[noreturn]] void fail(const std::string& what) const {
    RC_THROW(Errc::format, file_, ": pickle offset ", op_pos_, ": ", what,
             "\nHINT: the file is corrupt or was not written by torch.save");
  }
  void need(size_t n) const {
    if (p_.size() - pos_ < n) fail("truncated (needs " + std::to_string(n) + " more bytes)");
  }
  uint8_t u8() {
    need(1);
    return uint8_t(p_[pos_++]);
  }
  uint64_t uint_le(size_t n) {
    need(n);
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i) v |= uint64_t(uint8_t(p_[pos_ + i])) << (8 * i);
    pos_ += n;
    return v;
  }
  std::string_view take(uint64_t n) {
    if (n > p_.size() - pos_) fail("truncated string of " + std::to_string(n) + " bytes");
    std::string_view s = p_.substr(pos_, size_t(n));
    pos_ += size_t(n);
    return s;
  }
  std::string_view line() {
    const size_t nl = p_.find('\n', pos_);
    if (nl == std::string_view::npos) fail("unterminated GLOBAL name");
    std::string_view s = p_.substr(pos_, nl - pos_);
    pos_ = nl + 1;
    return s;
  }

  Obj* make(Kind k) {
    if (arena_.size() >= kMaxObjects) fail("more than " + std::to_string(kMaxObjects) + " objects");
    arena_.push_back(std::make_unique<Obj>());
    arena_.back()->kind = k;
    return arena_.back().get();
  }
  void push(Obj* o) {
    if (stack_.size() >= kMaxStack) fail("stack deeper than " + std::to_string(kMaxStack));
    stack_.push_back(o);
  }
  Obj* pop() {
    if (stack_.size() <= stack_floor()) fail("stack underflow");
    Obj* o = stack_.back();
    stack_.pop_back();
    return o;
  }
  Obj* top() {
    if (stack_.size() <= stack_floor()) fail("stack underflow");
    return stack_.back();
  }
  size_t stack_floor() const { return marks_.empty() ? 0 : marks_.back(); }
  // Items since the last MARK, removed from the stack together with the mark.
  std::vector<Obj*> pop_mark() {
    if (marks_.empty()) fail("no MARK to pop to");
    const size_t m = marks_.back();
    marks_.pop_back();
    std::vector<Obj*> items(stack_.begin() + ptrdiff_t(m), stack_.end());
    stack_.resize(m);
    return items;
  }
  void memo_put(uint64_t idx) {
    if (memo_.size() >= kMaxMemo && !memo_.count(idx)) fail("memo larger than " + std::to_string(kMaxMemo));
    memo_[idx] = top();
  }
  Obj* memo_get(uint64_t idx) {
    auto it = memo_.find(idx);
    if (it == memo_.end()) fail("memo entry " + std::to_string(idx) + " used before it was set");
    return it->second;
  }
  Obj* integer(int64_t v) {
    Obj* o = make(Kind::integer);
    o->i = v;
    return o;
  }
  Obj* tuple(std::vector<Obj*> items) {
    Obj* o = make(Kind::tuple);
    o->items = std::move(items);
    return o;
  }
  void set_items(Obj* dict, const std::vector<Obj*>& kv) {
    if (dict->kind != Kind::dict) fail(std::string("SETITEM(S) on a ") + kind_name(dict->kind));
    if (kv.size() % 2) fail("SETITEMS with an odd number of items");
    dict->items.insert(dict->items.end(), kv.begin(), kv.end());
  }
  void append_items(Obj* list, const std::vector<Obj*>& items) {
    if (list->kind != Kind::list) fail(std::string("APPEND(S) on a ") + kind_name(list->kind));
    list->items.insert(list->items.end(), items.begin(), items.end());
  }

  Obj* global(std::string_view module, std::string_view name);
  Obj* reduce(Obj* callable, Obj* args);
  Obj* persistent_load(Obj* pid);
  int64_t as_int(const Obj* o, const char* what) {
    if (o->kind != Kind::integer) fail(std::string(what) + " is a " + kind_name(o->kind) + ", expected an int");
    return o->i;
  }
  std::vector<int64_t> int_tuple(const Obj* o, const char* what) {
    if (o->kind != Kind::tuple) fail(std::string(what) + " is a " + kind_name(o->kind) + ", expected a tuple");
    std::vector<int64_t> v;
    for (const Obj* e : o->items) {
      v.push_back(as_int(e, what));
      if (v.back() < 0) fail(std::string(what) + " has a negative entry");
    }
    return v;
  }

  std::string_view p_;
  std::string file_;
  size_t pos_ = 0, op_pos_ = 0;
  std::vector<std::unique_ptr<Obj>> arena_;
  std::vector<Obj*> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<uint64_t, Obj*> memo_;
  std::unordered_map<std::string, size_t> storage_index_;
};

Obj* Unpickler::global(std::string_view module, std::string_view name) {
  Obj* o = make(Kind::global);
  o->s = std::string(module) + "." + std::string(name);
  if (module == "collections" && name == "OrderedDict") {
    o->g = Global::ordered_dict;
  } else if (module == "torch._utils" && name == "_rebuild_tensor_v2") {
    o->g = Global::rebuild_tensor_v2;
  } else if (module == "torch._utils" && name == "_rebuild_parameter") {
    o->g = Global::rebuild_parameter;
  } else if (module == "torch._utils" && name == "_rebuild_parameter_with_state") {
    o->g = Global::rebuild_parameter_with_state;
  } else if (module == "torch" && storage_dtype(name, o->storage_dtype)) {
    o->g = Global::storage_type;
  } else if (module == "torch" && name.ends_with("Storage")) {
    RC_THROW(Errc::unsupported, file_, ": tensor storage type 'torch.", name, "' is not supported",
             "\nHINT: convert the weights to float32/float16/bfloat16 before saving");
  } else {
    RC_THROW(Errc::format, file_, ": pickle references '", o->s,
             "', which a checkpoint never needs; refusing to load"
             "\nHINT: only load weights from sources you trust; convert trusted ones to safetensors");
  }
  return o;
}

Obj* Unpickler::persistent_load(Obj* pid) {
  // ('storage', storage_type, key, location, numel), as torch.serialization._save writes it.
  if (pid->kind != Kind::tuple || pid->items.size() != 5 || pid->items[0]->kind != Kind::string ||
      pid->items[0]->s != "storage")
    fail("persistent id is not ('storage', type, key, location, numel)");
  const Obj* type = pid->items[1];
  const Obj* key = pid->items[2];
  if (type->kind != Kind::global || type->g != Global::storage_type) fail("persistent id names no storage type");
  if (key->kind != Kind::string || key->s.empty()) fail("persistent id has no storage key");
  const int64_t numel = as_int(pid->items[4], "storage numel");
  if (numel < 0) fail("negative storage size");
  const size_t index = storage_index_.emplace(key->s, storages.size()).first->second;
  if (index == storages.size()) {
    storages.push_back({key->s, type->storage_dtype, uint64_t(numel)});
  } else if (storages[index].dtype != type->storage_dtype || storages[index].numel != uint64_t(numel)) {
    fail("storage '" + key->s + "' is described twice with different types or sizes");
  }
  Obj* o = make(Kind::storage);
  o->i = int64_t(index);
  return o;
}

Obj* Unpickler::reduce(Obj* callable, Obj* args) {
  if (callable->kind != Kind::global) fail(std::string("REDUCE calls a ") + kind_name(callable->kind));
  if (args->kind != Kind::tuple) fail("REDUCE arguments are not a tuple");
  const auto& a = args->items;
  switch (callable->g) {
    case Global::ordered_dict:
      if (!a.empty()) fail("OrderedDict(...) with arguments");
      return make(Kind::dict);
    case Global::rebuild_tensor_v2: {
      // (storage, storage_offset, size, stride, requires_grad, backward_hooks[, metadata])
      if (a.size() != 6 && a.size() != 7) fail("_rebuild_tensor_v2 takes 6 or 7 arguments");
      if (a[0]->kind != Kind::storage) fail("_rebuild_tensor_v2: first argument is not a storage");
      TensorRef t;
      t.storage = size_t(a[0]->i);
      const int64_t offset = as_int(a[1], "storage offset");
      if (offset < 0) fail("negative storage offset");
      t.offset = uint64_t(offset);
      t.shape = int_tuple(a[2], "tensor size");
      t.stride = int_tuple(a[3], "tensor stride");
      if (t.shape.size() != t.stride.size()) fail("tensor size and stride differ in length");
      tensors.push_back(std::move(t));
      Obj* o = make(Kind::tensor);
      o->i = int64_t(tensors.size() - 1);
      return o;
    }
    case Global::rebuild_parameter:             // (data, requires_grad, backward_hooks)
    case Global::rebuild_parameter_with_state:  // (data, requires_grad, backward_hooks, state)
      if (a.empty() || a[0]->kind != Kind::tensor) fail(callable->s + ": first argument is not a tensor");
      return a[0];
    case Global::storage_type:
      fail("a storage type is called directly");
  }
  fail("unknown callable");
}

Obj* Unpickler::run() {
  for (;;) {
    op_pos_ = pos_;
    const uint8_t op = u8();
    switch (op) {
      case 0x80: {  // PROTO
        const uint8_t proto = u8();
        if (proto < 2 || proto > 5) fail("pickle protocol " + std::to_string(proto) + " is not supported");
        break;
      }
      case 0x95:
        uint_le(8);
        break;     // FRAME: a length hint only
      case '.': {  // STOP
        Obj* result = pop();
        if (!marks_.empty() || !stack_.empty()) fail("items left on the stack at STOP");
        return result;
      }
      case '(':  // MARK
        if (marks_.size() >= kMaxMarks) fail("more than " + std::to_string(kMaxMarks) + " nested MARKs");
        marks_.push_back(stack_.size());
        break;
      case '}':
        push(make(Kind::dict));
        break;  // EMPTY_DICT
      case ']':
        push(make(Kind::list));
        break;  // EMPTY_LIST
      case ')':
        push(tuple({}));
        break;  // EMPTY_TUPLE
      case 'N':
        push(make(Kind::none));
        break;  // NONE
      case 0x88:
      case 0x89: {  // NEWTRUE, NEWFALSE
        Obj* o = make(Kind::boolean);
        o->i = op == 0x88;
        push(o);
        break;
      }
      case 'J':
        push(integer(int32_t(uint32_t(uint_le(4)))));
        break;  // BININT
      case 'K':
        push(integer(int64_t(uint_le(1))));
        break;  // BININT1
      case 'M':
        push(integer(int64_t(uint_le(2))));
        break;      // BININT2
      case 0x8a: {  // LONG1
        const size_t n = u8();
        if (n > 8) fail("LONG1 of " + std::to_string(n) + " bytes does not fit in 64 bits");
        uint64_t v = n ? uint_le(n) : 0;
        if (n && n < 8 && (v >> (8 * n - 1)) & 1) v |= ~uint64_t(0) << (8 * n);  // sign-extend
        push(integer(int64_t(v)));
        break;
      }
      case 'G': {  // BINFLOAT: big-endian double
        need(8);
        uint64_t bits = 0;
        for (int i = 0; i < 8; ++i) bits = (bits << 8) | uint8_t(p_[pos_ + size_t(i)]);
        pos_ += 8;
        Obj* o = make(Kind::floating);
        std::memcpy(&o->f, &bits, 8);
        push(o);
        break;
      }
      case 'X':
      case 0x8c:
      case 0x8d:  // BINUNICODE, SHORT_BINUNICODE, BINUNICODE8
      case 'B':
      case 'C': {  // BINBYTES, SHORT_BINBYTES
        const uint64_t n = (op == 0x8c || op == 'C') ? uint_le(1) : op == 0x8d ? uint_le(8) : uint_le(4);
        Obj* o = make(op == 'B' || op == 'C' ? Kind::bytes : Kind::string);
        o->s = std::string(take(n));
        push(o);
        break;
      }
      case 't':
        push(tuple(pop_mark()));
        break;  // TUPLE
      case 0x85:
      case 0x86:
      case 0x87: {  // TUPLE1, TUPLE2, TUPLE3
        const size_t n = size_t(op - 0x84);
        std::vector<Obj*> items(n);
        for (size_t i = n; i-- > 0;) items[i] = pop();
        push(tuple(std::move(items)));
        break;
      }
      case 'q':
        memo_put(uint_le(1));
        break;  // BINPUT
      case 'r':
        memo_put(uint_le(4));
        break;  // LONG_BINPUT
      case 0x94:
        memo_put(memo_.size());
        break;  // MEMOIZE
      case 'h':
        push(memo_get(uint_le(1)));
        break;  // BINGET
      case 'j':
        push(memo_get(uint_le(4)));
        break;     // LONG_BINGET
      case 's': {  // SETITEM
        Obj* v = pop();
        Obj* k = pop();
        set_items(top(), {k, v});
        break;
      }
      case 'u': {  // SETITEMS
        std::vector<Obj*> kv = pop_mark();
        set_items(top(), kv);
        break;
      }
      case 'a': {  // APPEND
        Obj* v = pop();
        append_items(top(), {v});
        break;
      }
      case 'e': {  // APPENDS
        std::vector<Obj*> items = pop_mark();
        append_items(top(), items);
        break;
      }
      case 'c': {  // GLOBAL "module\nname\n"
        const std::string_view module = line();
        const std::string_view name = line();
        push(global(module, name));
        break;
      }
      case 0x93: {  // STACK_GLOBAL
        Obj* name = pop();
        Obj* module = pop();
        if (module->kind != Kind::string || name->kind != Kind::string) fail("STACK_GLOBAL needs two strings");
        push(global(module->s, name->s));
        break;
      }
      case 'R': {  // REDUCE
        Obj* args = pop();
        Obj* callable = pop();
        push(reduce(callable, args));
        break;
      }
      case 'b': {  // BUILD: sets attributes (an OrderedDict's _metadata); tensors need none
        pop();
        Obj* target = top();
        if (target->kind != Kind::dict && target->kind != Kind::tensor)
          fail(std::string("BUILD on a ") + kind_name(target->kind));
        break;
      }
      case 'Q':
        push(persistent_load(pop()));
        break;  // BINPERSID
      default: {
        char hex[8];
        std::snprintf(hex, sizeof hex, "0x%02x", op);
        RC_THROW(Errc::format, file_, ": pickle offset ", op_pos_, ": opcode ", hex,
                 " is not one torch.save uses; refusing to load"
                 "\nHINT: re-save the checkpoint with torch.save(model.state_dict()) or convert it to safetensors");
      }
    }
  }
}

}  // namespace

StateDict parse_state_dict(std::string_view pickle, const std::string& label) {
  Unpickler up(pickle, label);
  const Obj* root = up.run();
  RC_CHECK(root->kind == Kind::dict, Errc::format, label, ": pickle holds a ", kind_name(root->kind),
           ", expected a dict of tensors\nHINT: save model.state_dict(), not the model or a training checkpoint");
  StateDict out;
  out.storages = std::move(up.storages);
  std::unordered_map<std::string, size_t> index;
  for (size_t i = 0; i + 1 < root->items.size(); i += 2) {
    const Obj* k = root->items[i];
    const Obj* v = root->items[i + 1];
    RC_CHECK(k->kind == Kind::string, Errc::format, label, ": state dict key is a ", kind_name(k->kind),
             ", expected a str");
    RC_CHECK(v->kind == Kind::tensor, Errc::format, label, ": entry '", k->s, "' is a ", kind_name(v->kind),
             ", expected a tensor\nHINT: save model.state_dict() only");
    TensorRef t = up.tensors[size_t(v->i)];
    t.name = k->s;
    auto [it, fresh] = index.emplace(k->s, out.tensors.size());
    if (fresh)
      out.tensors.push_back(std::move(t));
    else
      out.tensors[it->second] = std::move(t);
  }
  return out;
}

}  // namespace rc::io::pickle
