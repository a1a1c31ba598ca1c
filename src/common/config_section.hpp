// colmet.conf holds one INI section per program ([node], [collector], ...).
// CLI11 2.1 applies only the first key of a selected section, so colmet reads
// the whole file and keeps the keys of its own section itself.
#pragma once

#include <CLI/CLI.hpp>

#include <memory>
#include <string>

namespace colmet {

class SectionConfig : public CLI::ConfigINI {
public:
    explicit SectionConfig(std::string section) : m_section(std::move(section)) {}

    std::vector<CLI::ConfigItem> from_config(std::istream &input) const override
    {
        std::vector<CLI::ConfigItem> out;
        for (auto &item : CLI::ConfigINI::from_config(input)) {
            if (item.name == "++" || item.name == "--")
                continue;  // CLI11's section enter/leave markers
            if (item.parents.empty())
                throw CLI::ConfigError("configuration key '" + item.name +
                                       "' is outside a section: put it under [" + m_section + "]");
            if (item.parents.size() == 1 && item.parents.front() == m_section) {
                item.parents.clear();
                out.push_back(std::move(item));
            }
        }
        return out;
    }

private:
    std::string m_section;
};

// Read the configuration file given with -c/--config (default_path when not
// given; a missing default file is not an error) and take the keys of
// `section`; an unknown key in that section is an error.
inline void use_config_section(CLI::App &app, const std::string &section, const std::string &default_path)
{
    app.set_config("-c,--config", default_path, "Configuration file (its [" + section + "] section)");
    app.config_formatter(std::make_shared<SectionConfig>(section));
    app.allow_config_extras(CLI::config_extras_mode::error);
}

} // namespace colmet
