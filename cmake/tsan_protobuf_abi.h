// Force-included into every C++ file of a ThreadSanitizer build
// (CMakeLists.txt). protobuf's map_field.h gives MapFieldBase two extra
// members when __SANITIZE_THREAD__ is defined, but Debian's libprotobuf is
// not built with TSan: instrumented code and the library then disagree on
// the class layout, and map reflection (text format) crashes. Including the
// header once with the macro hidden gives it the library's layout; its
// include guard keeps every later include the same.
#pragma once
#pragma push_macro("__SANITIZE_THREAD__")
#undef __SANITIZE_THREAD__
#include <google/protobuf/map_field.h>
#pragma pop_macro("__SANITIZE_THREAD__")
