// colmet.conf holds one INI section per program ([node], [collector], ...).
// CLI11 2.1 applies only the first key of a selected section, so colmet reads
// the whole file and keeps the keys of its own section itself.
#pragma once

#include <CLI/CLI.hpp>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

namespace colmet {

class SectionConfig : public CLI::ConfigINI {
public:
    // The keys of [section], and of each [extra] section as "<extra>-<key>"
    // (colmet-collector's [tsdb] url is its --tsdb-url).
    explicit SectionConfig(std::string section, std::vector<std::string> extra = {})
        : m_section(std::move(section)), m_extra(std::move(extra))
    {
    }

    std::vector<CLI::ConfigItem> from_config(std::istream &input) const override
    {
        std::vector<CLI::ConfigItem> out;
        for (auto &item : CLI::ConfigINI::from_config(input)) {
            if (item.name == "++" || item.name == "--")
                continue;  // CLI11's section enter/leave markers
            if (item.parents.empty())
                throw CLI::ConfigError("configuration key '" + item.name + "' is outside a section: put it under [" +
                                       m_section + "]");
            if (item.parents.size() != 1)
                continue;
            if (item.parents.front() == m_section) {
                item.parents.clear();
                out.push_back(std::move(item));
            } else if (std::find(m_extra.begin(), m_extra.end(), item.parents.front()) != m_extra.end()) {
                item.name = item.parents.front() + "-" + item.name;
                item.parents.clear();
                out.push_back(std::move(item));
            }
        }
        return out;
    }

private:
    std::string m_section;
    std::vector<std::string> m_extra;
};

// Read the configuration file given with -c/--config (default_path when not
// given; a missing default file is not an error) and take the keys of
// `section`; an unknown key in that section is an error.
inline void use_config_section(CLI::App &app, const std::string &section, const std::string &default_path,
                               std::vector<std::string> extra = {})
{
    std::string sections = "[" + section + "]";
    for (const auto &e : extra)
        sections += " and [" + e + "]";
    app.set_config("-c,--config", default_path,
                   "Configuration file (its " + sections + (extra.empty() ? " section)" : " sections)"));
    app.config_formatter(std::make_shared<SectionConfig>(section, std::move(extra)));
    app.allow_config_extras(CLI::config_extras_mode::error);
}

}  // namespace colmet
