// A C++ exception thrown through a frame with a destructor, caught,
// rethrown and caught again.
#include <stdexcept>

struct Guard {
	int *count;
	~Guard() { ++*count; }
};

__attribute__((noinline)) void thrower(int x)
{
	if (x == 3)
		throw std::runtime_error("three");
}

__attribute__((noinline)) int middle(int x, int *dtors)
{
	Guard g{dtors};
	thrower(x);
	return x;
}

__attribute__((noinline)) int rethrower(int x, int *dtors)
{
	try {
		return middle(x, dtors);
	} catch (...) {
		++*dtors;
		throw;
	}
}

int main()
{
	int dtors = 0, caught = 0;
	for (int i = 2; i <= 3; i++) {
		try {
			rethrower(i, &dtors);
		} catch (const std::exception &) {
			caught++;
		}
	}
	return caught == 1 && dtors == 3 ? 0 : 1;
}
