#pragma once
#include "core/planted.hpp"
