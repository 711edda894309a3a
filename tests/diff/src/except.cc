// C++ exceptions: throw, catch, rethrow, cleanups (destructors), noexcept.
#include <stdexcept>
#include <string>
#include <vector>

namespace {
struct Guard {
	std::vector<int> *v;
	explicit Guard(std::vector<int> *vv) : v(vv) { v->push_back(1); }
	~Guard() { v->pop_back(); }
};

__attribute__((noinline)) void thrower(int n)
{
	if (n % 3 == 0)
		throw std::runtime_error("three " + std::to_string(n));
	if (n % 3 == 1)
		throw n;
}

__attribute__((noinline)) int middle(int n, std::vector<int> &v)
{
	Guard g(&v);
	std::string s(static_cast<size_t>(n) + 20, 'x');
	thrower(n);
	return static_cast<int>(s.size() + v.size());
}

__attribute__((noinline)) int rethrower(int n, std::vector<int> &v)
{
	try {
		return middle(n, v);
	} catch (const std::exception &) {
		throw;
	}
}
} // namespace

extern "C" int shape_exceptions(int n)
{
	std::vector<int> v;
	int r = 0;
	for (int i = 0; i < n + 3; i++) {
		try {
			r += rethrower(i, v);
		} catch (const std::runtime_error &e) {
			r += static_cast<int>(e.what()[0]);
		} catch (int x) {
			r += x;
		}
	}
	return r;
}
